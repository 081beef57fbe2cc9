// LogRegistry: the running broker's view of its partition logs (Kafka's
// LogManager as ReplicaManager and the coordinators see it): find, create,
// delete and truncate a partition's log, and the per-topic config every new
// log of a topic is opened with. Nothing here knows about log dirs, start-up
// recovery, checkpoints or background jobs; recovery/log_manager.h
// implements it over all of those.
//
// Every method is thread-safe. A Log* stays valid until the partition is
// deleted (AsyncDelete) or the registry shuts down.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "log/log.h"
#include "log/log_config.h"
#include "log/topic_config_overrides.h"
#include "log/topic_intents.h"
#include "log/topic_partition.h"
#include "log/uuid.h"

namespace daruma {

class LogRegistry {
 public:
  virtual ~LogRegistry() = default;

  // The live (current) log of tp, or nullptr.
  virtual Log* GetLog(const TopicPartition& tp) const = 0;
  // Every loaded log, live or not (future, stray, pending deletion).
  virtual std::vector<Log*> AllLogs() const = 0;
  // Whether `log` lies in a log dir that went offline (an I/O error there):
  // it stays loaded, so pointers to it stay valid, but must not be served.
  virtual bool IsInOfflineDir(const Log& log) const {
    (void)log;
    return false;
  }
  // The live log of tp, created with `config` if missing (idempotent); a new
  // log's `partition.metadata` names `topic_id` (unless it is zero) before
  // it is returned. An existing log whose partition.metadata names another
  // topic id is kInvalidArgument; no usable dir is kIoError.
  virtual Result<Log*> GetOrCreateLog(const TopicPartition& tp, const Uuid& topic_id,
                                      const LogConfig& config) = 0;
  // Kafka's asyncDelete: the log stops being served at once, its files go
  // later. kNotFound when tp has no live log.
  virtual Status AsyncDelete(const TopicPartition& tp) = 0;
  // Kafka's truncateTo / truncateFullyAndStartAt; a truncation is recorded
  // in the recovery point before returning. kNotFound without a live log.
  virtual Result<bool> TruncateTo(const TopicPartition& tp, int64_t offset) = 0;
  virtual Status TruncateFullyAndStartAt(const TopicPartition& tp, int64_t offset) = 0;

  // The topic's resolved config (the broker defaults when it has no
  // overrides), applied at once to its live logs and persisted as
  // `overrides` (the client's names and values, which resolved into it).
  virtual void SetTopicConfig(const std::string& topic, const LogConfig& config,
                              const TopicConfigOverrides& overrides) = 0;
  virtual LogConfig ConfigFor(const std::string& topic) const = 0;
  // The persisted overrides of `topic`, empty when it has none.
  virtual TopicConfigOverrides TopicOverridesOf(const std::string& topic) const = 0;

  // ---- Topic intents: what Kafka's metadata log makes atomic ----
  // Records, durably, that `topic` is being created (id, partition count) with
  // its resolved config and overrides, before any partition dir exists; a
  // restart completes a creation left unfinished (PendingTopicCreations).
  // kIoError when no log dir could record it.
  virtual Status BeginTopicCreation(const std::string& topic, const PendingTopicCreation& creation,
                                    const LogConfig& config,
                                    const TopicConfigOverrides& overrides) = 0;
  virtual void EndTopicCreation(const std::string& topic) = 0;
  virtual std::map<std::string, PendingTopicCreation> PendingTopicCreations() const = 0;
  // Records, durably, the deletion of the topic with this id before any of
  // its partition dirs is renamed: a partition dir of it found later (in a
  // dir that was offline, or after a crash mid-deletion) is deleted, not
  // served. kIoError when no log dir could record it.
  virtual Status RecordTopicDeletion(const std::string& topic, const Uuid& id) = 0;
  virtual bool IsDeletedTopic(const Uuid& id) const = 0;
  // Forget recorded deletions (this id's, or all) unless a log dir is offline.
  virtual void ForgetTopicDeletion(const Uuid& id) = 0;
  virtual void ForgetTopicDeletions() = 0;
  // Whether a log dir is offline (its partition dirs are then unknown).
  virtual bool HasOfflineLogDir() const = 0;
  // The id a Kafka broker's KRaft metadata gives `topic`, when this start
  // imported that metadata (dirs a Kafka broker wrote): a partition dir
  // without partition.metadata must get this id, not a new one.
  virtual std::optional<Uuid> KafkaTopicIdOf(const std::string& /*topic*/) const {
    return std::nullopt;
  }
};

}  // namespace daruma
