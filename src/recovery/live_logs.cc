#include "recovery/live_logs.h"

#include <fmt/format.h>

#include "log/log_file_names.h"
#include "log/partition_metadata_file.h"

namespace daruma {

Result<Log*> LiveLogs::GetOrCreateLog(const TopicPartition& tp, const Uuid& topic_id,
                                      const LogConfig& config) {
  std::lock_guard<std::mutex> create(create_mu_);
  if (!jobs_->started()) {
    return Status::InvalidArgument("GetOrCreateLog before LogManager::Startup");
  }
  for (auto& d : dirs_->dirs()) {
    const std::string path = JoinPath(d->path, LogDirName(tp));
    Log* existing = nullptr;
    {
      std::lock_guard<std::mutex> lock(dirs_->mu());
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
  LogDir* d = dirs_->PickDirForNewLog();
  if (!d) return Status::IoError("no online log dir to create " + tp.ToString() + " in");
  const std::string path = JoinPath(d->path, LogDirName(tp));
  auto created = Log::CreateEmpty(fs_, path, tp, config, clock_);
  Status st = created.status();
  // The new directory entry and partition.metadata are durable before the log
  // is served.
  if (st.ok()) st = fs_->SyncDir(d->path);
  if (st.ok() && !topic_id.IsZero()) {
    st = PartitionMetadataFile(JoinPath(path, kPartitionMetadataFileName), fs_).Write(topic_id);
  }
  if (!st.ok()) {
    if (st.IsIoError()) dirs_->failure_channel().MaybeAddOfflineLogDir(d->path, st);
    return st.WithContext("creating " + path);
  }
  Log* log = created->get();
  jobs_->WatchFlushes(*d, log);
  d->topic_ids[path] = topic_id;
  {
    std::lock_guard<std::mutex> lock(dirs_->mu());
    d->kinds[path] = DirKind::kLive;
    d->logs[path] = std::move(*created);
  }
  jobs_->UpdateCleanerRegistration(log, config);
  return log;
}

// Kafka's InconsistentTopicIdException.
Status LiveLogs::CheckIdentity(LogDir& d, const std::string& path, const Uuid& topic_id) {
  auto known = d.topic_ids.find(path);
  if (known != d.topic_ids.end() && (known->second == topic_id || topic_id.IsZero())) {
    return Status::Ok();
  }
  PartitionMetadataFile file(JoinPath(path, kPartitionMetadataFileName), fs_);
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

Status LiveLogs::AsyncDelete(const TopicPartition& tp) {
  std::unique_lock<std::mutex> jobs = jobs_->LockJobs();  // no job is using the log
  std::lock_guard<std::mutex> create(create_mu_);
  if (!jobs_->started()) {
    return Status::InvalidArgument("AsyncDelete before LogManager::Startup");
  }
  LogDir* dir = nullptr;
  std::string path;
  std::unique_ptr<Log> log;
  {
    std::lock_guard<std::mutex> lock(dirs_->mu());
    for (auto& d : dirs_->dirs()) {
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
  const CleanerHooks& cleaner = jobs_->cleaner_hooks();
  if (cleaner.abort_and_forget) cleaner.abort_and_forget(tp, dir->path);
  Status st = MoveToDeleteDir(*dir, path, DirKind::kLive, std::move(log));
  if (!st.ok()) return st.WithContext("deleting " + tp.ToString());
  configs_->ForgetIfUnused(tp.topic);
  Status future = DeleteFutureLogs(tp);
  // Kafka rewrites both checkpoints of the dir at once, without the partition.
  st = dirs_->CheckpointRecoveryPointsOf(*dir);
  if (st.ok()) st = dirs_->CheckpointLogStartOffsetsOf(*dir);
  if (!st.ok()) jobs_->OnJobError(dir->path, st);
  return st.ok() ? future : st;
}

Status LiveLogs::DeleteFutureLogs(const TopicPartition& tp) {
  for (;;) {
    LogDir* dir = nullptr;
    std::string path;
    std::unique_ptr<Log> log;
    {
      std::lock_guard<std::mutex> lock(dirs_->mu());
      for (auto& d : dirs_->dirs()) {
        for (auto it = d->logs.begin(); it != d->logs.end(); ++it) {
          auto kind = d->kinds.find(it->first);
          if (kind == d->kinds.end() || kind->second != DirKind::kFuture ||
              it->second->topic_partition() != tp) {
            continue;
          }
          dir = d.get();
          path = it->first;
          log = std::move(it->second);
          d->logs.erase(it);
          d->kinds.erase(kind);
          break;
        }
        if (log) break;
      }
    }
    if (!log) return Status::Ok();
    Status st = MoveToDeleteDir(*dir, path, DirKind::kFuture, std::move(log));
    if (!st.ok()) return st.WithContext("deleting the future log of " + tp.ToString());
  }
}

Status LiveLogs::MoveToDeleteDir(LogDir& dir, const std::string& path, DirKind kind,
                                 std::unique_ptr<Log> log) {
  const std::string deleted =
      JoinPath(dir.path, DeleteDirName(log->topic_partition(), Uuid::Random().ToHex()));
  Status st = fs_->Rename(path, deleted);
  if (st.ok()) st = fs_->SyncDir(dir.path);
  if (!st.ok()) {
    // The log was not moved away: it stays loaded (and its dir goes offline).
    if (st.IsIoError()) dirs_->failure_channel().MaybeAddOfflineLogDir(dir.path, st);
    std::lock_guard<std::mutex> lock(dirs_->mu());
    dir.kinds[path] = kind;
    dir.logs[path] = std::move(log);
    return st;
  }
  jobs_->ScheduleDirDeletion(std::move(log), deleted, configs_->defaults().file_delete_delay_ms);
  return Status::Ok();
}

Result<bool> LiveLogs::TruncateTo(const TopicPartition& tp, int64_t offset) {
  return Truncate(tp, offset, [offset](Log& log) { return log.TruncateTo(offset); });
}

Status LiveLogs::TruncateFullyAndStartAt(const TopicPartition& tp, int64_t offset) {
  return Truncate(tp, offset,
                  [offset](Log& log) -> Result<bool> {
                    DARUMA_RETURN_IF_ERROR(log.TruncateFullyAndStartAt(offset));
                    return true;
                  })
      .status();
}

Result<bool> LiveLogs::Truncate(const TopicPartition& tp, int64_t new_end,
                                const std::function<Result<bool>(Log&)>& truncate) {
  auto [log, dir] = dirs_->FindLive(tp);
  if (!log) return Status::NotFound("no live log for " + tp.ToString() + " to truncate");
  const CleanerHooks& cleaner = jobs_->cleaner_hooks();
  if (cleaner.abort_and_pause) cleaner.abort_and_pause(tp);
  Result<bool> truncated = truncate(*log);
  if (cleaner.resume_after_truncation) cleaner.resume_after_truncation(tp, dir->path, new_end);
  if (!truncated.ok()) {
    jobs_->OnJobError(dir->path, truncated.status());
    return truncated;
  }
  if (*truncated) {
    Status st = dirs_->CheckpointRecoveryPointsOf(*dir);
    if (!st.ok()) {
      jobs_->OnJobError(dir->path, st);
      return st;
    }
  }
  return truncated;
}

}  // namespace daruma
