// TopicRegistry: the broker's view of its topics (what Kafka keeps in its
// metadata cache): name -> topic id, partition count and config overrides.
//
// Source of truth on disk: the partition directories LogManager loaded. A
// topic's id is the one in its partitions' `partition.metadata`; a partition
// without that file (data from Kafka < 2.8) gets the topic's id written, or a
// fresh random id when no partition of the topic has one. The partition count
// is the highest loaded partition index + 1; partitions below it that no log
// dir holds (the dirs of one broker of a larger Kafka cluster) are created
// empty at start-up, so every partition Metadata advertises is served.
//
// Creation and deletion are whole across a crash (LogRegistry's topic
// intents): a creation is recorded before its first partition dir and Load
// completes one left unfinished; a deletion is recorded before the first
// rename and Load deletes a partition dir of a deleted topic it still finds.
//
// Topic config overrides given to CreateTopics are persisted by LogManager
// (daruma-topic-configs.json at each log dir's root, with the client's names
// and values; Kafka keeps them in its metadata log, which Daruma does not
// have) and read back here at start-up, so DescribeConfigs and the logs agree
// after a restart.
//
// Thread safety: every method may be called from any thread (request
// handlers run on several). Lookups take `mu_` only. Create, Delete,
// AddPartitions and EditOverrides also hold `admin_mu_` for their whole
// run, so two of them never interleave (two auto-creating Metadata requests
// for one name create it once; a Delete and a Create of one name see each
// other's result). Log pointers stay valid until
// the topic is deleted, and after that until LogManager removes the renamed
// directory (file.delete.delay.ms): a request that looked a log up just
// before a delete may still append to or read the doomed log, as in Kafka.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "broker/topic_config.h"
#include "common/file_system.h"
#include "common/status.h"
#include "log/log.h"
#include "log/log_config.h"
#include "log/log_registry.h"
#include "log/topic_partition.h"
#include "log/uuid.h"
#include "protocol/error_codes.h"

namespace daruma::broker {

inline constexpr char kConsumerOffsetsTopic[] = "__consumer_offsets";
inline constexpr char kTransactionStateTopic[] = "__transaction_state";

bool IsInternalTopic(std::string_view topic);

// At most this many partitions missing below a topic's highest one are
// created at one start, all topics together (CreateTopics' per-request cap).
inline constexpr int32_t kMaxMissingPartitionsCreatedAtStart = 10000;

struct TopicInfo {
  std::string name;
  Uuid id;
  int32_t partitions = 0;
  TopicOverrides overrides;
  LogConfig config;  // broker defaults with the overrides applied
};

class TopicRegistry {
 public:
  // `defaults` are the broker-level topic defaults (ServerConfig::log).
  TopicRegistry(LogRegistry* logs, LogConfig defaults, FileSystem* fs = FileSystem::Default());
  TopicRegistry(const TopicRegistry&) = delete;
  TopicRegistry& operator=(const TopicRegistry&) = delete;

  // Builds the registry from LogRegistry::AllLogs() (see the file comment).
  // `unloaded`: partitions whose directory was found but whose log is not
  // served (it failed to load, or its dir went offline); a topic with a
  // loaded partition counts them, so a failed last partition does not shrink
  // the topic (and move every consumer group to another __consumer_offsets
  // partition). kCorruption naming the file when a partition.metadata cannot
  // be parsed.
  // `notes` (optional) gets one line per creation completed and per partition
  // dir of a deleted topic removed, for the broker's log.
  Status Load(const std::set<TopicPartition>& unloaded = {},
              std::vector<std::string>* notes = nullptr);
  // Whether tp was found at start-up but is not served (see Load).
  bool IsUnloaded(const TopicPartition& tp) const;

  std::optional<TopicInfo> Find(const std::string& name) const;
  // The topic other than `name` whose name differs from it only by '.'
  // against '_', if any: Kafka refuses to create such a topic
  // (Topic.hasCollision), as both would report under the same metric names.
  std::optional<std::string> CollidingTopic(const std::string& name) const;
  // Kafka's words for it: "Topic 'a_b' collides with existing topic: a.b".
  static std::string CollisionMessage(const std::string& name, const std::string& other);
  // The topic with this id (Metadata v10+, Fetch v13+, DeleteTopics v6+), or
  // nullopt; never matches the zero id.
  std::optional<TopicInfo> FindById(const Uuid& id) const;
  // Every topic, sorted by name.
  std::vector<TopicInfo> All() const;
  // The partition's log, or nullptr when the topic or partition is unknown.
  Log* GetLog(const TopicPartition& tp) const;
  // The log to serve tp from, or nullptr with *error set: UNKNOWN_TOPIC_OR_PARTITION
  // for a partition the topic does not have, KAFKA_STORAGE_ERROR for one it has
  // but does not serve (it failed to load, or its log dir went offline), as
  // Kafka's ReplicaManager answers for an offline partition.
  Log* ServedLog(const TopicPartition& tp, ErrorCode* error) const;

  // Checks what Create would do without creating: the name (Kafka's rules, not
  // internal), `partitions` >= 1 and the overrides. kInvalidArgument (name,
  // config), kOutOfRange (partitions), kAlreadyExists.
  Result<LogConfig> ValidateCreate(const std::string& name, int32_t partitions,
                                   const TopicOverrides& overrides) const;
  // Creates every partition log (with partition.metadata) under a new id.
  Result<TopicInfo> Create(const std::string& name, int32_t partitions,
                           const TopicOverrides& overrides);
  // The internal topic `name` (__consumer_offsets, __transaction_state),
  // created with `partitions` and `overrides` when it does not exist yet (as
  // Kafka creates it on first use). kInvalidArgument for any other name.
  Result<TopicInfo> GetOrCreateInternal(const std::string& name, int32_t partitions,
                                        const TopicOverrides& overrides);
  // CreatePartitions: checks that `name` is known (kNotFound) and that
  // `new_count` is larger than its partition count (kOutOfRange, with Kafka's
  // wording), without changing anything.
  Status ValidateAddPartitions(const std::string& name, int32_t new_count) const;
  // Grows the topic to `new_count` partitions: each new partition log is
  // created through the LogRegistry (with the topic's id in partition.metadata and
  // its current config) before the count is raised, so a restart finds them
  // (Load counts partitions from the directories). A failure part-way leaves
  // the partitions created so far on disk and counted.
  Result<TopicInfo> AddPartitions(const std::string& name, int32_t new_count);
  // AlterConfigs / IncrementalAlterConfigs: `edit` maps the topic's current
  // overrides to its new whole override set (an empty set = broker defaults),
  // which is validated as CreateTopics validates overrides (kInvalidArgument
  // naming config and value), then, unless validate_only, persisted by
  // LogRegistry::SetTopicConfig (daruma-topic-configs.json) and applied to the
  // live logs. `edit` runs under admin_mu_, so two concurrent edits of one
  // topic never lose one (so it must not call this registry's Create, Delete,
  // AddPartitions or EditOverrides); an error it returns is returned as is.
  // kNotFound when the topic is unknown.
  using OverridesEdit = std::function<Result<TopicOverrides>(const TopicOverrides& current)>;
  Result<TopicInfo> EditOverrides(const std::string& name, const OverridesEdit& edit,
                                  bool validate_only);
  // Schedules every partition directory for deletion (`-delete` rename, removal
  // later) and forgets the topic. kNotFound when unknown.
  Status Delete(const std::string& name);

 private:
  std::optional<std::string> CollidingTopicLocked(const std::string& name) const;  // mu_ held
  struct Topic {
    Uuid id;
    int32_t partitions = 0;
    TopicOverrides overrides;
    LogConfig config;
  };
  TopicInfo ToInfo(const std::string& name, const Topic& t) const;
  // mu_ held, from Load.
  void CompletePendingCreationsLocked(std::vector<std::string>* notes);
  void CreateMissingPartitionsLocked(std::vector<std::string>* notes);
  Status SetAsideCorruptMetadata(const Log& log, const Status& why,
                                 std::vector<std::string>* notes);
  // Creates the partition logs and registers the topic; admin_mu_ held.
  Result<TopicInfo> CreateLogs(const std::string& name, int32_t partitions,
                               const TopicOverrides& overrides, const LogConfig& config);

  LogRegistry* logs_;
  LogConfig defaults_;
  FileSystem* fs_;
  // Lock order: admin_mu_ -> mu_ -> the LogRegistry's locks. Once Load has run,
  // mu_ is never held across a LogRegistry call or disk I/O.
  std::mutex admin_mu_;    // one Create, Delete, AddPartitions or EditOverrides at a time
  mutable std::mutex mu_;  // guards topics_
  std::map<std::string, Topic> topics_;
  std::map<Uuid, std::string> names_by_id_;  // guarded by mu_; the ids of topics_
  std::set<TopicPartition> unloaded_;        // guarded by mu_; see Load
};

}  // namespace daruma::broker
