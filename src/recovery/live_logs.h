// LiveLogs: the runtime LogRegistry over the log manager's dirs (Kafka's
// LogManager.getOrCreateLog / asyncDelete / truncateTo, spec §11.1).
//
//   * New partitions go to the serving dir holding the fewest partitions
//     (ties: the first in log.dirs order), with the new directory entry and
//     `partition.metadata` durable before the log is returned. A partition
//     that failed to load at start-up is never replaced by an empty log.
//   * AsyncDelete renames the partition dir to `<tp>.<uuid>-delete`, drops it
//     from the live set and from both offset checkpoints of its dir at once,
//     forgets the topic's overrides with its last partition, and removes the
//     files after the broker's log.segment.delete.delay.ms, not the topic's
//     file.delete.delay.ms, as Kafka (LogJobs::ScheduleDirDeletion). The
//     Log object stays valid (but must no longer be used) until then or until
//     shutdown. The partition's `-future` log, if a dir holds one, goes the
//     same way (Kafka's stopPartitions deletes both); left, it would be
//     loaded again at the next start.
//   * TruncateTo / TruncateFullyAndStartAt run between the cleaner hooks and
//     rewrite the dir's recovery-point checkpoint before returning: a
//     checkpointed recovery point above data appended after the truncation
//     would let an unclean start skip that data.
//
// Usable once the manager's jobs have started (before: kInvalidArgument).
// Lock order: LogJobs::LockJobs -> create_mu_ -> the dirs' locks.
#pragma once

#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/file_system.h"
#include "log/log_registry.h"
#include "recovery/log_dirs.h"
#include "recovery/log_jobs.h"
#include "recovery/topic_config_store.h"

namespace daruma {

class LiveLogs final : public LogRegistry {
 public:
  LiveLogs(LogDirs* dirs, LogJobs* jobs, TopicConfigStore* configs, FileSystem* fs, Clock* clock)
      : dirs_(dirs), jobs_(jobs), configs_(configs), fs_(fs), clock_(clock) {}

  Log* GetLog(const TopicPartition& tp) const override { return dirs_->FindLive(tp).first; }
  std::vector<Log*> AllLogs() const override { return dirs_->AllLogs(); }
  Result<Log*> GetOrCreateLog(const TopicPartition& tp, const Uuid& topic_id,
                              const LogConfig& config) override;
  Status AsyncDelete(const TopicPartition& tp) override;
  Result<bool> TruncateTo(const TopicPartition& tp, int64_t offset) override;
  Status TruncateFullyAndStartAt(const TopicPartition& tp, int64_t offset) override;
  void SetTopicConfig(const std::string& topic, const LogConfig& config,
                      const TopicConfigOverrides& overrides) override {
    configs_->Set(topic, config, overrides);
  }
  LogConfig ConfigFor(const std::string& topic) const override {
    return configs_->ConfigFor(topic);
  }
  TopicConfigOverrides TopicOverridesOf(const std::string& topic) const override {
    return configs_->OverridesOf(topic);
  }
  Status BeginTopicCreation(const std::string& topic, const PendingTopicCreation& creation,
                            const LogConfig& config,
                            const TopicConfigOverrides& overrides) override {
    return configs_->BeginCreate(topic, creation, config, overrides);
  }
  void EndTopicCreation(const std::string& topic) override { configs_->EndCreate(topic); }
  std::map<std::string, PendingTopicCreation> PendingTopicCreations() const override {
    return configs_->PendingCreations();
  }
  Status RecordTopicDeletion(const std::string& topic, const Uuid& id) override {
    return configs_->RecordDeletion(topic, id);
  }
  bool IsDeletedTopic(const Uuid& id) const override { return configs_->IsDeleted(id); }
  void ForgetTopicDeletion(const Uuid& id) override { configs_->ForgetDeletion(id); }
  void ForgetTopicDeletions() override { configs_->ForgetDeletions(); }
  bool HasOfflineLogDir() const override { return configs_->AnyLogDirOffline(); }
  std::optional<Uuid> KafkaTopicIdOf(const std::string& topic) const override {
    return configs_->KafkaTopicId(topic);
  }

 private:
  // Kafka: a live log whose partition.metadata names another topic id belongs
  // to a deleted-and-recreated topic; a missing file is written now.
  Status CheckIdentity(LogDir& d, const std::string& path, const Uuid& topic_id);
  // After tp's live log went: renames each of its `-future` logs to a
  // `-delete` dir and schedules its removal. A failed rename leaves that one
  // loaded, its error returned (an I/O error takes its dir offline).
  Status DeleteFutureLogs(const TopicPartition& tp);
  // Renames `log`'s dir `path` in `dir`, already taken out of the dir's
  // logs, to a `-delete` dir and schedules its removal; on failure puts it
  // back as `kind` and returns the error.
  Status MoveToDeleteDir(LogDir& dir, const std::string& path, DirKind kind,
                         std::unique_ptr<Log> log);
  // Runs `truncate` on tp's live log between the cleaner hooks, then
  // checkpoints the dir's recovery points.
  Result<bool> Truncate(const TopicPartition& tp, int64_t new_end,
                        const std::function<Result<bool>(Log&)>& truncate);

  LogDirs* dirs_;
  LogJobs* jobs_;
  TopicConfigStore* configs_;
  FileSystem* fs_;
  Clock* clock_;
  std::mutex create_mu_;  // GetOrCreateLog / AsyncDelete, one at a time; guards topic_ids
};

}  // namespace daruma
