// LogManager at runtime: creating, deleting and truncating partition logs
// (Kafka's LogManager.getOrCreateLog / asyncDelete / truncateTo). Topic
// configs are in log_manager_topic_configs.cc. Contract in log_manager.h.
#include <fmt/format.h>

#include "log/partition_metadata_file.h"
#include "recovery/log_manager.h"
#include "recovery/log_manager_dir_state.h"

namespace daruma {

bool LogManager::IsServing(const LogDirState& d) const {
  return d.all_loaded && !failure_channel_.IsOffline(d.path);
}

Result<Log*> LogManager::GetOrCreateLog(const TopicPartition& tp, const Uuid& topic_id,
                                        const LogConfig& config) {
  std::lock_guard<std::mutex> create(create_mu_);
  if (!scheduler_) return Status::InvalidArgument("GetOrCreateLog before LogManager::Startup");
  for (auto& d : dirs_) {
    const std::string path = JoinPath(d->path, LogDirName(tp));
    Log* existing = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = d->logs.find(path);
      if (it != d->logs.end()) existing = it->second.get();
      if (!existing && d->failed_tps.count(tp)) {
        return Status::InvalidArgument(
            fmt::format("{} failed to load at start-up in {}; not creating an empty log over it",
                        tp.ToString(), d->path));
      }
    }
    if (existing) {
      DARUMA_RETURN_IF_ERROR(CheckIdentity(*d, path, topic_id));
      return existing;
    }
  }
  LogDirState* d = PickDirForNewLog();
  if (!d) return Status::IoError("no online log dir to create " + tp.ToString() + " in");
  const std::string path = JoinPath(d->path, LogDirName(tp));
  auto created = Log::CreateEmpty(options_.fs, path, tp, config, options_.clock);
  Status st = created.status();
  // The new directory entry and partition.metadata are durable before the log
  // is served.
  if (st.ok()) st = options_.fs->SyncDir(d->path);
  if (st.ok() && !topic_id.IsZero()) {
    st = PartitionMetadataFile(JoinPath(path, kPartitionMetadataFileName), options_.fs)
             .Write(topic_id);
  }
  if (!st.ok()) {
    if (st.IsIoError()) failure_channel_.MaybeAddOfflineLogDir(d->path, st);
    return st.WithContext("creating " + path);
  }
  Log* log = created->get();
  WatchFlushes(*d, log);
  d->topic_ids[path] = topic_id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    d->kinds[path] = DirKind::kLive;
    d->logs[path] = std::move(*created);
  }
  UpdateCleanerRegistration(log, config);
  return log;
}

// Kafka: a live log whose partition.metadata names another topic id belongs
// to a deleted-and-recreated topic (InconsistentTopicIdException); a missing
// file is written now.
Status LogManager::CheckIdentity(LogDirState& d, const std::string& path, const Uuid& topic_id) {
  auto known = d.topic_ids.find(path);
  if (known != d.topic_ids.end() && (known->second == topic_id || topic_id.IsZero())) {
    return Status::Ok();
  }
  PartitionMetadataFile file(JoinPath(path, kPartitionMetadataFileName), options_.fs);
  if (file.Exists()) {
    DARUMA_ASSIGN_OR_RETURN(PartitionMetadata meta, file.Read());
    if (!topic_id.IsZero() && meta.topic_id != topic_id) {
      return Status::InvalidArgument(fmt::format(
          "{}: topic id {} in partition.metadata, expected {} (the topic was recreated?)", path,
          meta.topic_id.ToString(), topic_id.ToString()));
    }
    d.topic_ids[path] = meta.topic_id;
    return Status::Ok();
  }
  if (topic_id.IsZero()) return Status::Ok();
  DARUMA_RETURN_IF_ERROR(file.Write(topic_id));
  d.topic_ids[path] = topic_id;
  return Status::Ok();
}

// Kafka's nextLogDirs: the online dir with the fewest partitions (current and
// future logs), the first in log.dirs order on a tie.
LogManager::LogDirState* LogManager::PickDirForNewLog() const {
  std::lock_guard<std::mutex> lock(mu_);
  LogDirState* best = nullptr;
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

Status LogManager::AsyncDelete(const TopicPartition& tp) {
  std::lock_guard<std::mutex> jobs(jobs_mu_);  // no job is using the log
  std::lock_guard<std::mutex> create(create_mu_);
  if (!scheduler_) return Status::InvalidArgument("AsyncDelete before LogManager::Startup");
  LogDirState* dir = nullptr;
  std::string path;
  std::unique_ptr<Log> log;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& d : dirs_) {
      path = JoinPath(d->path, LogDirName(tp));
      auto it = d->logs.find(path);
      if (it == d->logs.end()) continue;
      dir = d.get();
      log = std::move(it->second);
      d->logs.erase(it);
      d->kinds.erase(path);
      break;
    }
  }
  if (!log) return Status::NotFound("no live log for " + tp.ToString() + " to delete");
  dir->topic_ids.erase(path);
  if (cleaner_.abort_and_forget) cleaner_.abort_and_forget(tp, dir->path);
  const std::string deleted = JoinPath(dir->path, DeleteDirName(tp, Uuid::Random().ToHex()));
  Status st = options_.fs->Rename(path, deleted);
  if (st.ok()) st = options_.fs->SyncDir(dir->path);
  if (!st.ok()) {
    // The log was not moved away: it stays live (and its dir goes offline).
    if (st.IsIoError()) failure_channel_.MaybeAddOfflineLogDir(dir->path, st);
    std::lock_guard<std::mutex> lock(mu_);
    dir->kinds[path] = DirKind::kLive;
    dir->logs[path] = std::move(log);
    return st.WithContext("deleting " + tp.ToString());
  }
  ScheduleDirDeletion(std::move(log), deleted, config_.file_delete_delay_ms);
  ForgetTopicConfigIfUnused(tp.topic);
  // Kafka rewrites both checkpoints of the dir at once, without the partition.
  st = CheckpointRecoveryPointsOf(*dir);
  if (st.ok()) st = CheckpointLogStartOffsetsOf(*dir);
  if (!st.ok()) OnJobError(dir->path, st);
  return st;
}

std::pair<Log*, LogManager::LogDirState*> LogManager::FindLive(const TopicPartition& tp) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& d : dirs_) {
    auto it = d->logs.find(JoinPath(d->path, LogDirName(tp)));
    if (it != d->logs.end()) return {it->second.get(), d.get()};
  }
  return {nullptr, nullptr};
}

Result<bool> LogManager::TruncateTo(const TopicPartition& tp, int64_t offset) {
  return Truncate(tp, offset, [offset](Log& log) { return log.TruncateTo(offset); });
}

Status LogManager::TruncateFullyAndStartAt(const TopicPartition& tp, int64_t offset) {
  return Truncate(tp, offset,
                  [offset](Log& log) -> Result<bool> {
                    DARUMA_RETURN_IF_ERROR(log.TruncateFullyAndStartAt(offset));
                    return true;
                  })
      .status();
}

Result<bool> LogManager::Truncate(const TopicPartition& tp, int64_t new_end,
                                  const std::function<Result<bool>(Log&)>& truncate) {
  auto [log, dir] = FindLive(tp);
  if (!log) return Status::NotFound("no live log for " + tp.ToString() + " to truncate");
  if (cleaner_.abort_and_pause) cleaner_.abort_and_pause(tp);
  Result<bool> truncated = truncate(*log);
  if (cleaner_.resume_after_truncation) cleaner_.resume_after_truncation(tp, dir->path, new_end);
  if (!truncated.ok()) {
    OnJobError(dir->path, truncated.status());
    return truncated;
  }
  if (*truncated) {
    Status st = CheckpointRecoveryPointsOf(*dir);
    if (!st.ok()) {
      OnJobError(dir->path, st);
      return st;
    }
  }
  return truncated;
}

void LogManager::SetCleanerHooks(CleanerHooks hooks) {
  cleaner_ = std::move(hooks);
}

}  // namespace daruma
