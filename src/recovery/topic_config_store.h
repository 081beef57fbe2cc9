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
// A log dir a KRaft broker wrote keeps its topic configs in
// `__cluster_metadata-0` only. Load(defaults, /*import_kafka=*/true) (the
// broker's start) reads them from there (kraft_topic_configs.h) when no dir
// has Daruma's file yet, for every live topic of the metadata, and
// PersistKafkaImport writes the file once the dirs are loaded: later starts
// never import again over what was changed since. A value Daruma refuses
// (say min.insync.replicas=2 on one node) is left out and reported, as is
// everything the replay skipped.
//
// Thread-safe after Load.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/file_system.h"
#include "log/log_config.h"
#include "log/topic_config_overrides.h"
#include "recovery/log_dirs.h"
#include "recovery/log_jobs.h"
#include "recovery/topic_config_file.h"

namespace daruma {

// What the import of a Kafka broker's topic configs did.
struct KafkaConfigImportReport {
  std::string metadata_log;  // the `__cluster_metadata-0` dir read
  std::string snapshot;      // the snapshot its replay started from; "" for none
  int64_t end_offset = 0;
  bool complete = true;  // false: the metadata could not be replayed, nothing imported
  std::map<std::string, TopicConfigOverrides> imported;  // topic -> the configs taken
  std::vector<std::string> refused;                      // "<topic>: <name>=<value>: <why>"
  // Cluster defaults of the metadata, imported into every topic's configs
  // (KraftTopicConfigs::cluster_defaults), and the broker and cluster
  // configs not imported (KraftTopicConfigs::broker_configs).
  std::vector<std::string> cluster_defaults;
  std::vector<std::string> broker_configs;
  int64_t next_producer_id = -1;          // KraftTopicConfigs::next_producer_id
  std::map<std::string, Uuid> topic_ids;  // KraftTopicConfigs::topic_ids (when complete)
  std::vector<std::string> notes;         // what the replay skipped or where it stopped
  std::string error;                      // reading the metadata failed (retried next start)
  std::string not_recorded;               // recording the import failed (imported again next start)
};

class TopicConfigStore {
 public:
  TopicConfigStore(LogDirs* dirs, LogJobs* jobs, FileSystem* fs)
      : dirs_(dirs), jobs_(jobs), fs_(fs) {}
  TopicConfigStore(const TopicConfigStore&) = delete;
  TopicConfigStore& operator=(const TopicConfigStore&) = delete;

  // At start-up, before any log is loaded; `defaults` are the broker's.
  // `import_kafka`: import a Kafka broker's topic configs (see above), from
  // `metadata_log_dir` (Kafka's metadata.log.dir) if given, else from the
  // first log dir that holds them.
  void Load(const LogConfig& defaults, bool import_kafka = false,
            const std::string& metadata_log_dir = "");
  // Once the dirs are loaded: records what Load imported (nothing to do when
  // it imported nothing). A failure is in the report; the configs still
  // apply until the broker stops, and the next start imports again.
  void PersistKafkaImport();
  // nullopt unless Load found a Kafka metadata log to import from.
  std::optional<KafkaConfigImportReport> kafka_import_report() const;
  // Every producer id a Kafka cluster's controller handed out lies below
  // this (kept with the import's mark, so every start knows it).
  std::optional<int64_t> kafka_next_producer_id() const;
  // An import of a Kafka broker's topic configs could not be done whole and
  // waits for a later start (retention holds off meanwhile).
  bool kafka_import_pending() const;
  // The id the imported metadata gives `topic`, this start's import or an
  // earlier one's (recorded with its mark): for partition dirs a crash left
  // without partition.metadata. None once the topic was deleted here.
  std::optional<Uuid> KafkaTopicId(const std::string& topic) const;
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
  // Load's: takes the newest file's content (`dir` is where it was read).
  void Adopt(TopicConfigs best, const std::string& dir);
  // Load's import: the configs go to configs_/overrides_, the report and the
  // mark to what PersistKafkaImport writes.
  void ImportKafkaTopicConfigs(const std::string& metadata_log_dir);
  std::optional<int32_t> NodeIdOfLogDirs() const;
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
  std::optional<KafkaConfigImportMark> kafka_import_;      // guarded by mu_
  std::optional<KafkaConfigImportReport> import_report_;   // guarded by mu_
  bool import_unrecorded_ = false;                         // guarded by mu_
  int64_t generation_ = 0;                                 // guarded by the dirs' checkpoint_mu()
};

}  // namespace daruma
