#include "broker/topic_registry.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "log/partition_metadata_file.h"
#include "recovery/quarantine.h"

namespace daruma::broker {

bool IsInternalTopic(std::string_view topic) {
  return topic == kConsumerOffsetsTopic || topic == kTransactionStateTopic;
}

TopicRegistry::TopicRegistry(LogRegistry* logs, LogConfig defaults, FileSystem* fs)
    : logs_(logs), defaults_(defaults), fs_(fs) {}

// A partition.metadata that does not parse goes to the partition's
// quarantine (its bytes kept, a manifest line says why), so that the loop
// can write it again like a missing one.
Status TopicRegistry::SetAsideCorruptMetadata(const Log& log, const Status& why,
                                              std::vector<std::string>* notes) {
  const std::string path = log.dir() + "/" + kPartitionMetadataFileName;
  Quarantine quarantine(fs_, log.dir(), BaseName(log.dir()), /*enabled=*/true, nullptr);
  DARUMA_RETURN_IF_ERROR(quarantine.MoveFile(
      path, {DamageKind::kCorruptMetadata, std::nullopt, std::nullopt, why.message()}));
  if (notes != nullptr) {
    notes->push_back(
        fmt::format("{}: unreadable ({}); set aside in {} and written again with the topic's id "
                    "(that of its other partitions, else a new one)",
                    path, why.message(), quarantine.dir()));
  }
  return Status::Ok();
}

Status TopicRegistry::Load(const std::set<TopicPartition>& unloaded,
                           std::vector<std::string>* notes) {
  std::lock_guard<std::mutex> lock(mu_);
  topics_.clear();
  unloaded_ = unloaded;
  // Partitions whose directory has no partition.metadata yet, by topic.
  std::map<std::string, std::vector<Log*>> without_id;
  // Partitions of topics deleted before (LogRegistry::RecordTopicDeletion).
  std::vector<TopicPartition> of_deleted_topics;
  for (Log* log : logs_->AllLogs()) {
    const TopicPartition& tp = log->topic_partition();
    // Live directories only: a `-delete` (or `-future`, `-stray`) one is no
    // partition of a topic.
    if (BaseName(log->dir()) != LogDirName(tp)) continue;
    PartitionMetadataFile file(log->dir() + "/" + kPartitionMetadataFileName, fs_);
    std::optional<Uuid> id;
    if (file.Exists()) {
      Result<PartitionMetadata> meta = file.Read();
      if (meta.ok()) {
        if (logs_->IsDeletedTopic(meta->topic_id)) {
          of_deleted_topics.push_back(tp);
          continue;
        }
        id = meta->topic_id;
      } else if (meta.status().IsCorruption()) {
        // One unreadable file must not stop the broker: set aside, and
        // written again below like a missing one, with the id the topic's
        // other partitions (or its recorded creation) hold.
        DARUMA_RETURN_IF_ERROR(SetAsideCorruptMetadata(*log, meta.status(), notes));
      } else {
        return meta.status();
      }
    }
    // Becoming leader with ISR = {this node}: everything in the log is
    // committed (Kafka's maybeIncrementLeaderHW).
    log->UpdateHighWatermark(log->log_end_offset());
    Topic& t = topics_[tp.topic];
    t.partitions = std::max(t.partitions, tp.partition + 1);
    // Overrides persisted by LogManager (daruma-topic-configs.json).
    t.overrides = logs_->TopicOverridesOf(tp.topic);
    t.config = logs_->ConfigFor(tp.topic);
    if (!id) {
      without_id[tp.topic].push_back(log);
      continue;
    }
    // Partitions of one topic share its id; the first one read wins.
    if (t.id.IsZero()) t.id = *id;
  }
  const std::map<std::string, PendingTopicCreation> pending = logs_->PendingTopicCreations();
  for (auto& [topic, logs] : without_id) {
    Topic& t = topics_[topic];
    // A crash between a new partition's dir and its partition.metadata: the
    // recorded creation knows the id.
    if (auto c = pending.find(topic); t.id.IsZero() && c != pending.end()) t.id = c->second.id;
    // Dirs a Kafka broker wrote: Kafka flushes partition.metadata after
    // creating the log (and before its first append), so a crash can leave a
    // new topic without it in every partition. Kafka takes such a dir, or
    // one naming another id than its metadata log's, for a stray one
    // (LogManager.isStrayKraftReplica); with the metadata log's id it keeps
    // the partition, and what Daruma appended to it.
    if (std::optional<Uuid> kafka = logs_->KafkaTopicIdOf(topic);
        t.id.IsZero() && kafka && !kafka->IsZero() && !logs_->IsDeletedTopic(*kafka)) {
      t.id = *kafka;
      if (notes != nullptr) {
        notes->push_back(fmt::format(
            "topic {}: {} partition dir(s) without partition.metadata get topic id {}, the id "
            "in the Kafka metadata log",
            topic, logs.size(), t.id.ToString()));
      }
    }
    if (t.id.IsZero()) t.id = Uuid::Random();
    for (Log* log : logs) {
      PartitionMetadataFile file(log->dir() + "/" + kPartitionMetadataFileName, fs_);
      DARUMA_RETURN_IF_ERROR(file.Write(t.id));
    }
  }
  for (const auto& [topic, t] : topics_) {
    std::optional<Uuid> kafka = logs_->KafkaTopicIdOf(topic);
    if (!kafka || t.id == *kafka || notes == nullptr) continue;
    notes->push_back(fmt::format(
        "topic {}: partition.metadata names topic id {}, the Kafka metadata log {}; Daruma "
        "serves it as {}, and a Kafka broker on these dirs would take its partitions for stray "
        "ones",
        topic, t.id.ToString(), kafka->ToString(), t.id.ToString()));
  }
  for (const TopicPartition& tp : unloaded_) {
    auto it = topics_.find(tp.topic);
    if (it != topics_.end())
      it->second.partitions = std::max(it->second.partitions, tp.partition + 1);
  }
  // A deleted topic's partition dir (its log dir was offline at the deletion,
  // or the broker stopped mid-deletion) goes the way the rest of it went.
  // A failure is noted and leaves the rest alone: one bad disk must not stop
  // the broker from serving the others.
  bool all_deleted = true;
  for (const TopicPartition& tp : of_deleted_topics) {
    Status st = logs_->AsyncDelete(tp);
    all_deleted = all_deleted && st.ok();
    if (notes == nullptr) continue;
    notes->push_back(
        st.ok() ? fmt::format("partition {} belongs to a topic deleted before (its log dir was "
                              "offline then, or the deletion was interrupted): deleted now, as "
                              "the rest of it was",
                              tp.ToString())
                : fmt::format("partition {} belongs to a topic deleted before, but deleting it "
                              "failed ({}); it is not served, and the next start tries again",
                              tp.ToString(), st.ToString()));
  }
  // Kept while a dir is offline or a partition did not load.
  if (unloaded_.empty() && all_deleted) logs_->ForgetTopicDeletions();
  CompletePendingCreationsLocked(notes);
  CreateMissingPartitionsLocked(notes);
  names_by_id_.clear();
  for (const auto& [name, t] : topics_) names_by_id_[t.id] = name;
  return Status::Ok();
}

bool TopicRegistry::IsUnloaded(const TopicPartition& tp) const {
  std::lock_guard<std::mutex> lock(mu_);
  return unloaded_.count(tp) > 0;
}

TopicInfo TopicRegistry::ToInfo(const std::string& name, const Topic& t) const {
  return TopicInfo{name, t.id, t.partitions, t.overrides, t.config};
}

std::optional<TopicInfo> TopicRegistry::Find(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = topics_.find(name);
  if (it == topics_.end()) return std::nullopt;
  return ToInfo(it->first, it->second);
}

std::optional<TopicInfo> TopicRegistry::FindById(const Uuid& id) const {
  if (id.IsZero()) return std::nullopt;
  std::lock_guard<std::mutex> lock(mu_);
  auto name = names_by_id_.find(id);
  if (name == names_by_id_.end()) return std::nullopt;
  auto it = topics_.find(name->second);
  if (it == topics_.end()) return std::nullopt;
  return ToInfo(it->first, it->second);
}

Log* TopicRegistry::ServedLog(const TopicPartition& tp, ErrorCode* error) const {
  Log* log = GetLog(tp);
  if (log == nullptr) {
    *error = IsUnloaded(tp) ? ErrorCode::kKafkaStorageError : ErrorCode::kUnknownTopicOrPartition;
    return nullptr;
  }
  if (logs_->IsInOfflineDir(*log)) {
    *error = ErrorCode::kKafkaStorageError;
    return nullptr;
  }
  *error = ErrorCode::kNone;
  return log;
}

std::vector<TopicInfo> TopicRegistry::All() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<TopicInfo> out;
  for (const auto& [name, t] : topics_) out.push_back(ToInfo(name, t));
  return out;
}

Log* TopicRegistry::GetLog(const TopicPartition& tp) const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = topics_.find(tp.topic);
    if (it == topics_.end() || tp.partition < 0 || tp.partition >= it->second.partitions) {
      return nullptr;
    }
  }
  return logs_->GetLog(tp);
}

Result<LogConfig> TopicRegistry::ValidateCreate(const std::string& name, int32_t partitions,
                                                const TopicOverrides& overrides) const {
  DARUMA_RETURN_IF_ERROR(ValidateTopicName(name));
  if (IsInternalTopic(name)) {
    return Status::InvalidArgument("topic " + name + " is reserved for internal use");
  }
  if (partitions < 1) {
    return Status::OutOfRange("number of partitions must be larger than 0, found " +
                              std::to_string(partitions));
  }
  DARUMA_ASSIGN_OR_RETURN(LogConfig config, ApplyTopicOverrides(defaults_, overrides));
  std::lock_guard<std::mutex> lock(mu_);
  if (topics_.count(name) != 0) {
    return Status::AlreadyExists("topic '" + name + "' already exists");
  }
  if (std::optional<std::string> other = CollidingTopicLocked(name)) {
    return Status::InvalidArgument(CollisionMessage(name, *other));
  }
  return config;
}

namespace {

std::string MetricName(std::string name) {
  std::replace(name.begin(), name.end(), '.', '_');
  return name;
}

}  // namespace

std::string TopicRegistry::CollisionMessage(const std::string& name, const std::string& other) {
  return "Topic '" + name + "' collides with existing topic: " + other;
}

std::optional<std::string> TopicRegistry::CollidingTopic(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  return CollidingTopicLocked(name);
}

std::optional<std::string> TopicRegistry::CollidingTopicLocked(const std::string& name) const {
  if (name.find_first_of("._") == std::string::npos) return std::nullopt;
  const std::string key = MetricName(name);
  for (const auto& [existing, t] : topics_) {
    if (existing != name && MetricName(existing) == key) return existing;
  }
  return std::nullopt;
}

// A creation a crash interrupted: its missing partitions are created, with
// the id and config it was recorded with, so the topic is whole, as a
// committed CreateTopics record is in Kafka.
void TopicRegistry::CompletePendingCreationsLocked(std::vector<std::string>* notes) {
  // A dir that is offline may hold some of its partitions: creating them
  // elsewhere would put one partition in two dirs once it is back.
  const bool dir_offline = logs_->HasOfflineLogDir();
  for (const auto& [name, creation] : logs_->PendingTopicCreations()) {
    Topic& t = topics_[name];
    if (!t.id.IsZero() && t.id != creation.id) {
      // Another topic of that name exists: the creation never got further.
      logs_->EndTopicCreation(name);
      continue;
    }
    t.id = creation.id;
    t.overrides = logs_->TopicOverridesOf(name);
    t.config = logs_->ConfigFor(name);
    t.partitions = std::max(t.partitions, creation.partitions);
    if (dir_offline) {
      if (notes != nullptr) {
        notes->push_back(fmt::format(
            "the creation of topic '{}' was interrupted; a log dir is offline, so its missing "
            "partitions are created at a start that finds every dir",
            name));
      }
      continue;
    }
    int32_t created = 0;
    Status failed = Status::Ok();
    for (int32_t p = 0; p < creation.partitions && failed.ok(); ++p) {
      const TopicPartition tp{name, p};
      if (unloaded_.count(tp) > 0 || logs_->GetLog(tp) != nullptr) continue;
      Result<Log*> log = logs_->GetOrCreateLog(tp, t.id, t.config);
      if (!log.ok()) {
        failed = log.status();
        break;
      }
      (*log)->UpdateHighWatermark((*log)->log_end_offset());
      ++created;
    }
    if (failed.ok()) logs_->EndTopicCreation(name);
    if (notes != nullptr) {
      notes->push_back(
          failed.ok()
              ? fmt::format("the creation of topic '{}' was interrupted: completed it, creating "
                            "{} of its {} partition(s) with its recorded configs",
                            name, created, creation.partitions)
              : fmt::format("the creation of topic '{}' was interrupted and completing it failed "
                            "({}); the next start tries again",
                            name, failed.ToString()));
    }
  }
}

namespace {

// "0-4, 7, 9-10" for sorted partition numbers.
std::string Ranges(const std::vector<int32_t>& sorted) {
  std::string out;
  for (size_t i = 0; i < sorted.size();) {
    size_t j = i;
    while (j + 1 < sorted.size() && sorted[j + 1] == sorted[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += j == i ? std::to_string(sorted[i]) : fmt::format("{}-{}", sorted[i], sorted[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace

// Metadata advertises partitions 0..count-1. One that no log dir holds (the
// dirs of one broker of a multi-broker cluster hold only its replicas; a
// partition dir moved away) would be advertised and never served: producers
// time out and consumers retry for ever. Created empty with the topic's id
// and configs, the topic is whole on this node, as a new partition of
// CreatePartitions would be. Not while a log dir is offline (the partition
// may be there) or for one that failed to load (its dir is there).
void TopicRegistry::CreateMissingPartitionsLocked(std::vector<std::string>* notes) {
  if (logs_->HasOfflineLogDir()) return;
  int32_t budget = kMaxMissingPartitionsCreatedAtStart;
  for (auto& [name, t] : topics_) {
    std::vector<int32_t> missing;
    for (int32_t p = 0; p < t.partitions; ++p) {
      const TopicPartition tp{name, p};
      if (unloaded_.count(tp) == 0 && logs_->GetLog(tp) == nullptr) missing.push_back(p);
    }
    if (missing.empty()) continue;
    if (int32_t(missing.size()) > budget) {
      if (notes != nullptr) {
        notes->push_back(fmt::format(
            "topic '{}': partitions {} have no directory in any log dir; more than the {} "
            "this start may create, so they are advertised but not served (create them "
            "with fewer topics at once, or move the dirs that hold them here)",
            name, Ranges(missing), kMaxMissingPartitionsCreatedAtStart));
      }
      continue;
    }
    std::vector<int32_t> created;
    Status failed = Status::Ok();
    for (int32_t p : missing) {
      Result<Log*> log = logs_->GetOrCreateLog({name, p}, t.id, t.config);
      if (!log.ok()) {
        failed = log.status();
        break;
      }
      (*log)->UpdateHighWatermark((*log)->log_end_offset());
      created.push_back(p);
    }
    budget -= int32_t(created.size());
    if (notes == nullptr) continue;
    notes->push_back(
        failed.ok()
            ? fmt::format("topic '{}': partitions {} had no directory in any log dir (the dirs "
                          "of one broker of a larger cluster?); created them empty so that all "
                          "{} partitions are served",
                          name, Ranges(created), t.partitions)
            : fmt::format("topic '{}': creating its missing partitions {} failed ({}); they "
                          "are advertised but not served",
                          name, Ranges(missing), failed.ToString()));
  }
}

Result<TopicInfo> TopicRegistry::Create(const std::string& name, int32_t partitions,
                                        const TopicOverrides& overrides) {
  std::lock_guard<std::mutex> admin(admin_mu_);
  DARUMA_ASSIGN_OR_RETURN(LogConfig config, ValidateCreate(name, partitions, overrides));
  return CreateLogs(name, partitions, overrides, config);
}

Result<TopicInfo> TopicRegistry::GetOrCreateInternal(const std::string& name, int32_t partitions,
                                                     const TopicOverrides& overrides) {
  std::lock_guard<std::mutex> admin(admin_mu_);
  if (std::optional<TopicInfo> found = Find(name)) return *found;
  if (!IsInternalTopic(name) || partitions < 1) {
    return Status::InvalidArgument("not an internal topic: " + name);
  }
  DARUMA_ASSIGN_OR_RETURN(LogConfig config, ApplyTopicOverrides(defaults_, overrides));
  return CreateLogs(name, partitions, overrides, config);
}

Result<TopicInfo> TopicRegistry::CreateLogs(const std::string& name, int32_t partitions,
                                            const TopicOverrides& overrides,
                                            const LogConfig& config) {
  // A creation of this name left pending keeps its id: its partition dirs
  // may exist already.
  const std::map<std::string, PendingTopicCreation> pending = logs_->PendingTopicCreations();
  auto earlier = pending.find(name);
  Topic t{earlier != pending.end() ? earlier->second.id : Uuid::Random(), partitions, overrides,
          config};
  // The creation and the overrides are durable before the first partition
  // dir: a crash part-way leaves a creation the next start completes (Load),
  // never a topic with fewer partitions or without its configs.
  DARUMA_RETURN_IF_ERROR(
      logs_->BeginTopicCreation(name, PendingTopicCreation{t.id, partitions}, config, overrides));
  Status made = Status::Ok();
  for (int32_t p = 0; p < partitions && made.ok(); ++p) {
    TopicPartition tp{name, p};
    // GetOrCreateLog writes partition.metadata with the id.
    Result<Log*> log = logs_->GetOrCreateLog(tp, t.id, config);
    if (log.ok()) {
      (*log)->UpdateHighWatermark((*log)->log_end_offset());
    } else {
      made = log.status().WithContext(
          fmt::format("creating partition {} of {} of topic '{}' (the creation stays recorded "
                      "and the next start completes it)",
                      p, partitions, name));
    }
  }
  // A failure part-way (a dir went offline) leaves the topic registered with
  // the partitions it has and its creation recorded, as a crash would.
  if (made.ok()) logs_->EndTopicCreation(name);
  std::lock_guard<std::mutex> lock(mu_);
  if (!made.ok()) {
    if (topics_.emplace(name, t).second) names_by_id_[t.id] = name;
    return made;
  }
  auto [it, inserted] = topics_.emplace(name, t);
  if (!inserted) return Status::AlreadyExists("topic '" + name + "' already exists");
  names_by_id_[t.id] = name;
  return ToInfo(it->first, it->second);
}

Status TopicRegistry::ValidateAddPartitions(const std::string& name, int32_t new_count) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = topics_.find(name);
  if (it == topics_.end()) return Status::NotFound("unknown topic '" + name + "'");
  const int32_t current = it->second.partitions;
  if (new_count == current) {
    return Status::OutOfRange("Topic already has " + std::to_string(current) + " partition(s).");
  }
  if (new_count < current) {
    return Status::OutOfRange("The topic " + name + " currently has " + std::to_string(current) +
                              " partition(s); " + std::to_string(new_count) +
                              " would not be an increase.");
  }
  return Status::Ok();
}

Result<TopicInfo> TopicRegistry::AddPartitions(const std::string& name, int32_t new_count) {
  std::lock_guard<std::mutex> admin(admin_mu_);
  DARUMA_RETURN_IF_ERROR(ValidateAddPartitions(name, new_count));
  Topic t;
  {
    std::lock_guard<std::mutex> lock(mu_);
    t = topics_.at(name);
  }
  for (int32_t p = t.partitions; p < new_count; ++p) {
    TopicPartition tp{name, p};
    DARUMA_ASSIGN_OR_RETURN(Log * log, logs_->GetOrCreateLog(tp, t.id, t.config));
    log->UpdateHighWatermark(log->log_end_offset());
    // Counted as soon as it exists: GetLog must find every created log.
    std::lock_guard<std::mutex> lock(mu_);
    topics_.at(name).partitions = p + 1;
  }
  std::lock_guard<std::mutex> lock(mu_);
  return ToInfo(name, topics_.at(name));
}

Result<TopicInfo> TopicRegistry::EditOverrides(const std::string& name, const OverridesEdit& edit,
                                               bool validate_only) {
  std::lock_guard<std::mutex> admin(admin_mu_);
  TopicOverrides current;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = topics_.find(name);
    if (it == topics_.end()) return Status::NotFound("unknown topic '" + name + "'");
    current = it->second.overrides;
  }
  DARUMA_ASSIGN_OR_RETURN(TopicOverrides overrides, edit(current));
  DARUMA_ASSIGN_OR_RETURN(LogConfig config, ApplyTopicOverrides(defaults_, overrides));
  if (!validate_only) {
    // Applied to the live logs and persisted (LogRegistry::SetTopicConfig).
    logs_->SetTopicConfig(name, config, overrides);
  }
  std::lock_guard<std::mutex> lock(mu_);
  Topic& t = topics_.at(name);  // admin_mu_ held: no Delete in between
  if (!validate_only) {
    t.overrides = std::move(overrides);
    t.config = config;
  }
  return ToInfo(name, t);
}

Status TopicRegistry::Delete(const std::string& name) {
  std::lock_guard<std::mutex> admin(admin_mu_);
  int32_t partitions = 0;
  Uuid id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = topics_.find(name);
    if (it == topics_.end()) return Status::NotFound("unknown topic '" + name + "'");
    partitions = it->second.partitions;
    id = it->second.id;
  }
  // Durable before the first rename: a partition dir a crash or an offline
  // dir leaves behind is deleted at the next start (Load), not served again.
  DARUMA_RETURN_IF_ERROR(logs_->RecordTopicDeletion(name, id));
  bool whole = true;  // every partition dir was renamed away
  {
    std::lock_guard<std::mutex> lock(mu_);
    names_by_id_.erase(id);
    topics_.erase(name);
    for (const TopicPartition& tp : unloaded_) whole = whole && tp.topic != name;
  }
  // Every partition it can, whatever fails: the recorded deletion covers the
  // rest at the next start (one in an offline dir is not touched, as Kafka
  // never touches an offline dir).
  Status first_error = Status::Ok();
  for (int32_t p = 0; p < partitions; ++p) {
    TopicPartition tp{name, p};
    Log* log = logs_->GetLog(tp);
    if (log == nullptr) continue;  // a gap in the loaded partitions
    if (logs_->IsInOfflineDir(*log)) {
      whole = false;
      continue;
    }
    Status st = logs_->AsyncDelete(tp);
    if (!st.ok()) {
      whole = false;
      if (first_error.ok()) first_error = st;
    }
  }
  if (whole) logs_->ForgetTopicDeletion(id);  // kept while a log dir is offline
  return first_error;
}

}  // namespace daruma::broker
