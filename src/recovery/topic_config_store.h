// TopicConfigStore: per-topic config overrides (Kafka's updateTopicConfig),
// resolved onto the broker defaults, applied to the topic's logs and
// persisted in daruma-topic-configs.json at the root of every serving log dir
// (recovery/topic_config_file.h).
//
// Load reads the file of every online dir at start-up, before any log opens
// (so each opens with its overrides), and keeps the highest generation that
// parses; every problem is a warning of the dir it came from, and the topics
// and configs concerned run on the broker defaults. Every change (Set, and
// ForgetIfUnused when a topic's last partition is deleted) writes the file
// of every serving dir; a failed write takes the dir offline (I/O error) or
// is a job error.
//
// Topic intents (topic_config_file.h "creating" and "deleted"): a creation is
// recorded, with the topic's overrides, before its first partition dir is
// made, and forgotten once all exist; a deletion is recorded before the first
// partition dir is renamed, and forgotten once no dir can hold a partition
// of it (none is offline). They make a topic's creation and deletion whole
// across a crash, as Kafka's metadata log does.
//
// Thread-safe after Load.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "common/file_system.h"
#include "log/log_config.h"
#include "log/topic_config_overrides.h"
#include "recovery/log_dirs.h"
#include "recovery/log_jobs.h"
#include "recovery/topic_config_file.h"

namespace daruma {

class TopicConfigStore {
 public:
  TopicConfigStore(LogDirs* dirs, LogJobs* jobs, FileSystem* fs)
      : dirs_(dirs), jobs_(jobs), fs_(fs) {}
  TopicConfigStore(const TopicConfigStore&) = delete;
  TopicConfigStore& operator=(const TopicConfigStore&) = delete;

  // At start-up, before any log is loaded; `defaults` are the broker's.
  void Load(const LogConfig& defaults);
  const LogConfig& defaults() const { return defaults_; }

  // The topic's resolved config and the overrides persisted for it; applied
  // at once to the topic's loaded logs (the cleaner registration follows).
  void Set(const std::string& topic, const LogConfig& config,
           const TopicConfigOverrides& overrides);
  // Drops the overrides of `topic` when none of its current logs is left.
  void ForgetIfUnused(const std::string& topic);

  // Records the creation of `topic` (and its overrides, if any) durably in
  // at least one serving dir; kIoError when none took it, and then nothing
  // of it is kept (RecordDeletion too).
  Status BeginCreate(const std::string& topic, const PendingTopicCreation& creation,
                     const LogConfig& config, const TopicConfigOverrides& overrides);
  void EndCreate(const std::string& topic);
  std::map<std::string, PendingTopicCreation> PendingCreations() const;
  // Records the deletion of the topic with this id durably in at least one
  // serving dir, before any of its partition dirs is renamed.
  Status RecordDeletion(const std::string& topic, const Uuid& id);
  bool IsDeleted(const Uuid& id) const;
  // Forgets recorded deletions once no log dir is offline (every partition
  // dir of those topics was then found and renamed): `id`'s alone, or all.
  void ForgetDeletion(const Uuid& id);
  void ForgetDeletions();
  // Whether a log dir is offline: its partitions are unknown until it is back.
  bool AnyLogDirOffline() const;
  LogConfig ConfigFor(const std::string& topic) const;
  TopicConfigOverrides OverridesOf(const std::string& topic) const;

 private:
  // Writes the file of every serving dir: OK when at least one took it.
  Status Persist();
  bool AnyDirOffline() const;

  LogDirs* dirs_;
  LogJobs* jobs_;
  FileSystem* fs_;
  LogConfig defaults_;
  mutable std::mutex mu_;
  std::map<std::string, LogConfig> configs_;               // guarded by mu_
  std::map<std::string, TopicConfigOverrides> overrides_;  // guarded by mu_
  std::map<std::string, PendingTopicCreation> creating_;   // guarded by mu_
  std::map<Uuid, std::string> deleted_;                    // guarded by mu_
  int64_t generation_ = 0;                                 // guarded by the dirs' checkpoint_mu()
};

}  // namespace daruma
