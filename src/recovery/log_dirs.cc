#include "recovery/log_dirs.h"

#include <algorithm>
#include <filesystem>

#include "log/clean_shutdown_file.h"

namespace daruma {

// ---- Start-up -------------------------------------------------------------------

Status LogDirs::Add(const std::vector<std::string>& paths) {
  if (paths.empty()) return Status::InvalidArgument("no log directory given");
  std::set<std::string> seen;
  for (const std::string& dir : paths) {
    auto d = std::make_unique<LogDir>();
    d->path = dir;
    while (d->path.size() > 1 && d->path.back() == '/') d->path.pop_back();
    if (!seen.insert(std::filesystem::path(d->path).lexically_normal().string()).second) {
      return Status::InvalidArgument("log dir " + dir + " is listed twice");
    }
    dirs_.push_back(std::move(d));
  }
  return Status::Ok();
}

Status LogDirs::Prepare() {
  std::vector<std::string> fatal;
  for (auto& d : dirs_) {
    Status st = PrepareDir(*d);
    if (st.ok()) continue;
    if (st.IsIoError() && !DirLock::IsHeldElsewhere(st)) {
      MarkOffline(*d, st);  // Kafka: an I/O error here fails only this dir
    } else {
      failure_channel_.MaybeAddOfflineLogDir(d->path, st);
      fatal.push_back(st.message());
    }
  }
  if (fatal.empty()) {
    Status st = CheckMetaProperties();
    if (st.ok()) st = CheckDuplicatePartitions();
    if (!st.ok()) fatal.push_back(st.message());
  }
  if (!fatal.empty()) {
    std::string message = fatal[0];
    for (size_t i = 1; i < fatal.size(); ++i) message += "; " + fatal[i];
    return Status::InvalidArgument(message);
  }
  for (auto& d : dirs_) {
    if (!IsOffline(*d)) return Status::Ok();
  }
  return Status::IoError("no log directory is usable");
}

Status LogDirs::PrepareDir(LogDir& d) {
  if (!fs_->Exists(d.path)) {
    DARUMA_RETURN_IF_ERROR(fs_->CreateDir(d.path));
    DARUMA_RETURN_IF_ERROR(fs_->SyncDir(ParentDir(d.path)));
  }
  DARUMA_ASSIGN_OR_RETURN(d.lock, DirLock::Acquire(d.path));
  const std::string meta_path = JoinPath(d.path, kMetaPropertiesFileName);
  if (fs_->Exists(meta_path)) {
    auto meta = MetaProperties::Read(meta_path, fs_);
    if (!meta.ok()) {
      if (meta.status().IsIoError()) return meta.status();
      return Status::InvalidArgument("log dir " + d.path + ": " + meta.status().message());
    }
    d.meta = *meta;
  }
  DARUMA_ASSIGN_OR_RETURN(std::vector<DirEntry> entries, fs_->ListDir(d.path));
  std::sort(entries.begin(), entries.end(),
            [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
  for (const DirEntry& e : entries) {
    if (!e.is_directory || IsIgnoredLogDirEntry(e.name)) continue;
    auto name = ParseTopicPartitionDirName(e.name);
    if (!name.ok()) {
      return Status::InvalidArgument(
          "log dir " + d.path + ": " + name.status().message() +
          " (move it out of the log dir, or name it <topic>-<partition>)");
    }
    d.partitions.push_back({JoinPath(d.path, e.name), *name});
  }
  return Status::Ok();
}

// Every dir that has meta.properties must agree on cluster.id and node.id
// (Kafka refuses to start otherwise: the dirs belong to different brokers),
// and no two may share a directory.id nor name a reserved one: Kafka's
// MetaPropertiesEnsemble.verify refuses that too, so a start that accepted
// it would leave dirs that only Daruma opens.
Status LogDirs::CheckMetaProperties() const {
  const LogDir* first = nullptr;
  std::vector<std::pair<std::string, MetaProperties>> files;
  for (const auto& d : dirs_) {
    if (!d->meta) continue;
    files.emplace_back(JoinPath(d->path, kMetaPropertiesFileName), *d->meta);
    if (!first) {
      first = d.get();
      continue;
    }
    if (d->meta->cluster_id != first->meta->cluster_id ||
        d->meta->node_id != first->meta->node_id) {
      return Status::InvalidArgument(
          "meta.properties of " + d->path + " and " + first->path +
          " disagree on cluster.id / node.id: the directories belong to different brokers");
    }
  }
  std::string message;
  for (const DirectoryIdProblem& p : FindDirectoryIdProblems(files)) {
    if (!message.empty()) message += "; ";
    message += p.path + ": " + p.what +
               " (Kafka refuses to start: delete that directory.id line, from the copy for a "
               "shared id, and Kafka writes a new one at its next start)";
  }
  if (!message.empty()) return Status::InvalidArgument(message);
  return Status::Ok();
}

Status LogDirs::CheckDuplicatePartitions() const {
  std::map<TopicPartition, std::string> live;
  for (const auto& d : dirs_) {
    for (const PartitionDir& p : d->partitions) {
      if (p.name.kind != DirKind::kLive) continue;
      auto [it, inserted] = live.emplace(p.name.tp, p.path);
      if (!inserted) {
        return Status::InvalidArgument("partition " + p.name.tp.ToString() + " is live in both " +
                                       it->second + " and " + p.path);
      }
    }
  }
  return Status::Ok();
}

bool LogDirs::ReadState(LogDir& d) {
  CleanShutdownFile marker(d.path, fs_);
  d.had_clean_shutdown = marker.Exists();
  if (d.had_clean_shutdown) {
    auto epoch = marker.ReadBrokerEpoch();
    if (epoch.ok()) d.broker_epoch = *epoch;
    // Deleted before any log of the dir is loaded: a crash from here on must
    // make the next start unclean.
    Status st = marker.Remove();
    if (st.ok()) st = fs_->SyncDir(d.path);
    if (!st.ok()) {
      MarkOffline(d, st);
      return false;
    }
  }
  d.recovery_points = ReadCheckpoint(d, kRecoveryPointCheckpointFile);
  d.log_start_offsets = ReadCheckpoint(d, kLogStartOffsetCheckpointFile);
  d.high_watermarks = ReadCheckpoint(d, kReplicationOffsetCheckpointFile);
  return true;
}

OffsetMap LogDirs::ReadCheckpoint(LogDir& d, const char* name) {
  auto file = OffsetCheckpointFile::Open(JoinPath(d.path, name), fs_);
  std::string text;
  Result<OffsetMap> offsets = file.ok() ? file->Read(&text) : Result<OffsetMap>(file.status());
  if (offsets.ok()) {
    d.checkpoints_found[name] = std::move(text);
    return std::move(*offsets);
  }
  warnings_[d.path].push_back(offsets.status().ToString() + " (read as empty)");
  return {};
}

// ---- Checkpoints ----------------------------------------------------------------

Status LogDirs::WriteCheckpoints(LogDir& d, bool keep_found) {
  DARUMA_RETURN_IF_ERROR(CheckpointRecoveryPointsOf(d, keep_found));
  DARUMA_RETURN_IF_ERROR(CheckpointLogStartOffsetsOf(d, keep_found));
  return CheckpointHighWatermarksOf(d, keep_found);
}

Status LogDirs::CheckpointHighWatermarksOf(LogDir& d, bool keep_found) {
  std::lock_guard<std::mutex> lock(checkpoint_mu_);
  return WriteCheckpointFile(
      d, kReplicationOffsetCheckpointFile,
      CollectOffsets(d, d.high_watermarks, [](Log& log) { return log.high_watermark(); }),
      keep_found);
}

// Callers hold checkpoint_mu_, which also keeps a deleted partition's Log
// alive (LogJobs::ScheduleDirDeletion), so the logs are read outside mu_: a
// slow fsync holding one log's lock does not block GetLog.
OffsetMap LogDirs::CollectOffsets(LogDir& d, const OffsetMap& carried,
                                  const std::function<std::optional<int64_t>(Log&)>& value) const {
  OffsetMap out;
  std::vector<Log*> logs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const TopicPartition& tp : d.failed_tps) {
      auto it = carried.find(tp);
      if (it != carried.end()) out[tp] = it->second;
    }
    for (const auto& [path, log] : d.logs) {
      if (d.IsCurrent(path)) logs.push_back(log.get());
    }
  }
  for (Log* log : logs) {
    if (auto v = value(*log)) out[log->topic_partition()] = *v;
  }
  return out;
}

Status LogDirs::WriteCheckpointFile(LogDir& d, const char* name, const OffsetMap& offsets,
                                    bool keep_found, FileSystem* via) {
  // checkpoints_found holds what the file holds, as read or as last written
  // (every write updates it, with keep_found or not), so skipping a write
  // whose text equals it never leaves the file stale.
  std::string text = OffsetCheckpointFile::Serialize(offsets);
  auto found = d.checkpoints_found.find(name);
  if (keep_found && found != d.checkpoints_found.end() && found->second == text) {
    return Status::Ok();
  }
  DARUMA_ASSIGN_OR_RETURN(OffsetCheckpointFile file,
                          OffsetCheckpointFile::Open(JoinPath(d.path, name), via ? via : fs_));
  Status written = file.WriteSerialized(text);
  if (!written.ok()) {
    // The file may hold either text now: the next write must not be skipped.
    d.checkpoints_found.erase(name);
    return written;
  }
  d.checkpoints_found[name] = std::move(text);
  return Status::Ok();
}

Status LogDirs::CheckpointRecoveryPointsOf(LogDir& d, bool keep_found, FileSystem* via) {
  std::lock_guard<std::mutex> lock(checkpoint_mu_);
  // Cleared before reading: a flush from here on marks the dir again.
  d.recovery_points_dirty.store(false);
  return WriteCheckpointFile(
      d, kRecoveryPointCheckpointFile,
      CollectOffsets(d, d.recovery_points, [](Log& log) { return log.recovery_point(); }),
      keep_found, via);
}

// Kafka lists only logs whose start is above their first segment's base.
Status LogDirs::CheckpointLogStartOffsetsOf(LogDir& d, bool keep_found) {
  auto start_above_first_segment = [](Log& log) -> std::optional<int64_t> {
    const std::vector<int64_t> bases = log.segment_base_offsets();
    const int64_t start = log.log_start_offset();
    if (!bases.empty() && start > bases.front()) return start;
    return std::nullopt;
  };
  std::lock_guard<std::mutex> lock(checkpoint_mu_);
  return WriteCheckpointFile(d, kLogStartOffsetCheckpointFile,
                             CollectOffsets(d, d.log_start_offsets, start_above_first_segment),
                             keep_found);
}

// ---- State ------------------------------------------------------------------------

void LogDirs::MarkOffline(LogDir& d, const Status& error) {
  // The channel ignores a lack of descriptors (IsTooManyOpenFiles), which
  // reaches here only after the cache's release-and-retry failed: stripped
  // of that detail it counts.
  failure_channel_.MaybeAddOfflineLogDir(
      d.path, IsTooManyOpenFiles(error) ? Status(error.code(), error.message()) : error);
  std::lock_guard<std::mutex> lock(mu_);
  d.logs.clear();
  d.all_loaded = false;
  d.dropped = true;
}

bool LogDirs::IsServing(const LogDir& d) const {
  return d.all_loaded && !IsOffline(d);
}

bool LogDirs::HasFailures() const {
  for (const auto& d : dirs_) {
    if (IsOffline(*d) || d->failed_partitions > 0) return true;
  }
  return false;
}

std::vector<Log*> LogDirs::AllLogs() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Log*> out;
  for (const auto& d : dirs_) {
    for (const auto& [path, log] : d->logs) out.push_back(log.get());
  }
  return out;
}

std::pair<Log*, LogDir*> LogDirs::FindLive(const TopicPartition& tp) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& d : dirs_) {
    auto it = d->logs.find(JoinPath(d->path, LogDirName(tp)));
    if (it != d->logs.end()) return {it->second.get(), d.get()};
  }
  return {nullptr, nullptr};
}

std::vector<Log*> LogDirs::JobLogs() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Log*> out;
  for (const auto& d : dirs_) {
    if (!IsServing(*d)) continue;
    for (const auto& [path, log] : d->logs) {
      if (d->IsCurrent(path)) out.push_back(log.get());
    }
  }
  return out;
}

bool LogDirs::IsLiveLog(const Log* log) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& d : dirs_) {
    if (!IsServing(*d)) continue;
    for (const auto& [path, live] : d->logs) {
      if (live.get() != log) continue;
      return d->IsLive(path);
    }
  }
  return false;
}

LogDir* LogDirs::PickDirForNewLog() const {
  std::lock_guard<std::mutex> lock(mu_);
  LogDir* best = nullptr;
  size_t best_count = 0;
  for (const auto& d : dirs_) {
    if (!IsServing(*d)) continue;
    size_t count = 0;
    for (const auto& [path, kind] : d->kinds) {
      if (kind == DirKind::kLive || kind == DirKind::kFuture) ++count;
    }
    if (!best || count < best_count) {
      best = d.get();
      best_count = count;
    }
  }
  return best;
}

}  // namespace daruma
